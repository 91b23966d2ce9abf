"""What roadkit's routing core and its apps share, apart from routing (see ``serving`` and ``documents``)."""
