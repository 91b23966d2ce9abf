"""OSRM engine plugin for roadkit (source kinds ``osrm``, in process, and ``osrm-http``, osrm-routed servers)."""

from roadkit_osrm.remote import OsrmHttpOptions, OsrmHttpSource
from roadkit_osrm.source import OsrmOptions, OsrmSource

__all__ = ["OsrmHttpOptions", "OsrmHttpSource", "OsrmOptions", "OsrmSource"]
