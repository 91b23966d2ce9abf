"""roadkit's client application: the browser app (``static/``) and its backend API.

The backend serves ``/me`` and ``/documents`` to a bearer access token (local mode) or to the
remote-mode portal's session cookie, and runs that portal (``/login``, ``/logout``).
"""

from .backend import create_backend_app
from .config import ClientConfig, ConfigError, config_from_mapping, load_config
from .static_app import create_static_app, public_settings

__all__ = [
    "ClientConfig",
    "ConfigError",
    "config_from_mapping",
    "create_backend_app",
    "create_static_app",
    "load_config",
    "public_settings",
]
__version__ = "0.1.0"
