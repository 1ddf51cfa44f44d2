"""The version, in a leaf module of its own: every stage records it, and none may import the package's face
(``evalsuite/__init__.py``, the Python API, which hands on to the commands)."""

__version__ = "0.1.0"
