"""The ``dex-agents`` command line: ``engine``, ``demo``, ``chat`` and ``sessions`` (see ``main``)."""
