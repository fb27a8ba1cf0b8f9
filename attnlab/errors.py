"""attnlab's own exceptions: every one names what was wrong and what is allowed.

They subclass ValueError so that callers who already catch ValueError keep working.
"""


class AttnlabError(ValueError):
    """Base class of every error attnlab raises on purpose."""


class ConfigError(AttnlabError):
    """A ModelConfig field (or a config file) holds a value attnlab cannot build."""


class InputError(AttnlabError):
    """Tensors or text given to a model do not fit it (shape, dtype, token ids, length)."""


class CheckpointError(AttnlabError):
    """A checkpoint file or directory is missing, corrupted, unsupported or disagrees with its config."""
