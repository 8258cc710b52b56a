"""elegantrl: lightweight, efficient and stable deep reinforcement learning in PyTorch.

The library is four modules and the storage they share: ``elegantrl.net`` (networks),
``elegantrl.agent`` (algorithms), ``elegantrl.replay`` (experience storage), ``elegantrl.run``
(Arguments, training, evaluation, the command line) and ``elegantrl.env`` (PreprocessEnv).
"""

__version__ = "0.1.0"
