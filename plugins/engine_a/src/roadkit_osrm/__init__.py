"""OSRM engine plugin for roadkit (source kind ``osrm``)."""

from roadkit_osrm.source import OsrmOptions, OsrmSource

__all__ = ["OsrmOptions", "OsrmSource"]
