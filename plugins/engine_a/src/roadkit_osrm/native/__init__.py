"""The native OSRM API v1: osrm-routed's URLs, options and answers served from roadkit's resources."""
