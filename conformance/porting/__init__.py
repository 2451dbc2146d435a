"""Starter material for a port: the JavaScript kit and binding skeleton (``kit js``), the Python starter port (``kit py``)."""
