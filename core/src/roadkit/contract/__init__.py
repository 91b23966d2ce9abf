"""The public contract between roadkit's core and its plugins, in two parts.

- :mod:`roadkit.contract.sources`: what a source kind needs (``Source``, the engine-agnostic requests and
  answers, errors, options helpers, data preparation, the remote-engine toolkit);
- :mod:`roadkit.contract.apis`: what an API plugin needs (``Api``, the ``ServiceView`` of a running
  service, its resources, answers and errors, the OpenAPI viewer routes);
- :mod:`roadkit.contract.native_osrm`: the protocol of a source that answers the native OSRM API.

A plugin imports from these modules only; everything else in ``roadkit`` is core's own and may change
without notice. Nothing here holds process-wide state: what a source learns of its process comes as
values (:class:`~roadkit.contract.sources.SourceContext`).
"""
