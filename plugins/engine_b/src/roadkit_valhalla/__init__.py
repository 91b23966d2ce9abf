"""Valhalla engine plugin for roadkit (source kinds ``valhalla``, in process, and ``valhalla-http``, valhalla_service servers)."""

from roadkit_valhalla.options import ValhallaCost, ValhallaHttpOptions, ValhallaOptions
from roadkit_valhalla.remote import ValhallaHttpSource
from roadkit_valhalla.source import ValhallaSource

__all__ = ["ValhallaCost", "ValhallaHttpOptions", "ValhallaHttpSource", "ValhallaOptions", "ValhallaSource"]
