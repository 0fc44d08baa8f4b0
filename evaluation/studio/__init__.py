"""so101-studio: the whole workflow in one local web page, each action the command a user would type."""
