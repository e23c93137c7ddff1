"""Every criterion's result gathered on the controller, and the one verdict decided from them."""
