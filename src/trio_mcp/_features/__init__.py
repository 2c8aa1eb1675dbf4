"""_features."""
