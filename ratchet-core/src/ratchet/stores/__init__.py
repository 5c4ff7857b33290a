"""Built-in stores. They register through entry points exactly as third-party stores do."""
