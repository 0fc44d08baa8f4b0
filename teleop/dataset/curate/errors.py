"""The one error a curation raises: what cannot be done, and the option that fixes it."""

from teleop.dataset.errors import DatasetError


class CurationError(DatasetError):
    """A curation that cannot be planned or written; the message names the cause and the next step."""
