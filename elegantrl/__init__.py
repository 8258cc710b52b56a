"""elegantrl: lightweight, efficient and stable deep reinforcement learning in PyTorch.

The library is four modules and the storage they share: ``elegantrl.net`` (networks),
``elegantrl.agent`` (algorithms), ``elegantrl.replay`` (experience storage), ``elegantrl.run``
(Arguments, training, evaluation, the command line) and ``elegantrl.env`` (PreprocessEnv);
``elegantrl.parallel`` holds the multi-process machinery behind ``run.train_and_evaluate_mp``, and
``elegantrl.distributed`` what several learners (ranks of ``torch.distributed``) share.
"""

__version__ = "0.1.0"
