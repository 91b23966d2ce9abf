"""Valhalla engine plugin for roadkit (source kind ``valhalla``)."""

from roadkit_valhalla.options import ValhallaCost, ValhallaOptions
from roadkit_valhalla.source import ValhallaSource

__all__ = ["ValhallaCost", "ValhallaOptions", "ValhallaSource"]
