"""roadkit's development IAM: a small Keycloak-compatible OpenID Connect server.

FOR DEVELOPMENT AND TESTS ONLY. Production uses Keycloak; roadkit's client finds every
endpoint through discovery, so it runs unchanged against either.
"""

from .app import create_app
from .config import ConfigError, IamConfig, load_config

__all__ = ["ConfigError", "IamConfig", "create_app", "load_config"]
__version__ = "0.1.0"
