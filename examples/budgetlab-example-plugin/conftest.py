"""pytest imports this file with its directory first on sys.path, so the tests import the package from this
checkout, installed or not."""
