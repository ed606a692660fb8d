"""An example algorithm plugin for budgetlab (see docs/guide/plugins.md)."""
