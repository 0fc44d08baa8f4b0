"""so101-review: the local web app for checking and overriding judge scores."""
