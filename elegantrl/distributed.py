"""Several learners: ranks of `torch.distributed` whose gradients are averaged (`LearnerGroup`).

The ranks are started by ``torchrun`` (any layout, one machine or many) or, on one machine, by
`train_and_evaluate_mp` itself for ``Arguments.learner_gpus``. Every rank explores its own envs
(and its own worker processes), keeps its own replay shard and learns; every optimizer step
averages the gradients over the ranks in one flattened all-reduce, so that all ranks hold the same
networks, target networks and optimizer states. Rank 0 alone evaluates, prints and writes the run
folder. NCCL carries the collectives between GPUs, Gloo between CPUs.
"""

from __future__ import annotations

import datetime
import io
import os
from collections.abc import Iterable
from typing import Any

import torch
import torch.distributed as dist

RANK_SEED_OFFSET = 1_000_000  # rank r explores with seed + 1,000,000 * r: one run seed, one curve
COLLECTIVE_TIMEOUT_SECONDS = 600  # a rank that waits this long for the others takes them to hang (as parallel.STALL_SECONDS)


class LearnerGroup:
    """This process's place among several learners (the default process group of `torch.distributed`).

    The trainers use it for the few things the ranks must agree on: the starting agent, the
    gradients, the state statistics and when to stop. A collective waits for every rank, so each
    rank must call the same ones in the same order: the trainers do the same rounds on every rank.
    """

    def __init__(self, device: str | torch.device):
        self.rank, self.world_size = dist.get_rank(), dist.get_world_size()
        self.device = torch.device(device)  # where the collectives' tensors live: NCCL needs them on the rank's GPU
        self.is_main = self.rank == 0
        self.backend = dist.get_backend()
        self.made_here = False  # whether join_learners made the process group (and so ends it)

    def average_gradients(self, parameters: Iterable[torch.Tensor]) -> None:
        """Replaces each parameter's gradient by its mean over the ranks (one all-reduce for all of them)."""
        grads = [parameter.grad for parameter in parameters if parameter.grad is not None]
        if not grads:
            return
        flat = torch.cat([grad.reshape(-1) for grad in grads])
        dist.all_reduce(flat)
        flat /= self.world_size
        for grad, part in zip(grads, flat.split([grad.numel() for grad in grads])):
            grad.copy_(part.view_as(grad))

    def mean(self, tensor: torch.Tensor) -> torch.Tensor:
        """`tensor`'s mean over the ranks (a new tensor)."""
        total = tensor.detach().clone()
        dist.all_reduce(total)
        return total / self.world_size

    def agree(self, flag: bool) -> bool:
        """Rank 0's `flag` on every rank: whether to stop (the target reached, say) is rank 0's to say."""
        tensor = torch.tensor([float(flag)], device=self.device)
        dist.broadcast(tensor, src=0)
        return bool(tensor.item())

    def broadcast_object(self, obj: Any) -> Any:
        """Rank 0's `obj` (anything that pickles) on every rank."""
        box = [obj]
        dist.broadcast_object_list(box, src=0, device=self.device if self.device.type == "cuda" else None)
        return box[0]

    def gather(self, tensor: torch.Tensor) -> torch.Tensor:
        """Every rank's `tensor` (the same shape on each) concatenated along dim 0, rank by rank."""
        tensor = tensor.contiguous()
        parts = [torch.empty_like(tensor) for _ in range(self.world_size)]
        dist.all_gather(parts, tensor)
        return torch.cat(parts)

    def sync_agent(self, agent: Any) -> None:
        """Gives every rank rank 0's agent: networks, optimizer states, learned tensors and step count."""
        data = None
        if self.is_main:
            buffer = io.BytesIO()
            torch.save(agent.state_dict(), buffer)
            data = buffer.getvalue()
        data = self.broadcast_object(data)
        if not self.is_main:
            agent.load_state_dict(torch.load(io.BytesIO(data), map_location=agent.device, weights_only=True))


def gpu_device(gpu_id: int) -> str:
    """The torch device of an entry of ``Arguments.learner_gpus``: -1 is the CPU (as in the original ElegantRL)."""
    return "cpu" if gpu_id < 0 else f"cuda:{gpu_id}"


def rank_gpu(local_rank: int) -> str:
    """The GPU of torchrun's local rank `local_rank`, one GPU per rank; ValueError if the machine has too few."""
    gpus = torch.cuda.device_count()
    if local_rank >= gpus:
        fewer = f"give torchrun --nproc-per-node {gpus} or fewer, or " if gpus else ""
        raise ValueError(f"torchrun's local rank {local_rank} takes cuda:{local_rank}, one GPU per rank, but this machine has "
                         f"{gpus} CUDA device(s): {fewer}--device cpu to train the ranks on the CPU (Gloo)")
    return f"cuda:{local_rank}"


def backend_for(device: str | torch.device) -> str:
    """NCCL between GPUs, Gloo between CPUs."""
    return "nccl" if torch.device(device).type == "cuda" else "gloo"


def launched_by_torchrun() -> bool:
    """Whether this process is one of several that ``torchrun`` started (it sets WORLD_SIZE and LOCAL_RANK)."""
    return int(os.environ.get("WORLD_SIZE", "1")) > 1 and "LOCAL_RANK" in os.environ


def join_learners(args: Any) -> LearnerGroup | None:
    """This process's `LearnerGroup`, or None where it is the only learner.

    Joins the process group that ``torchrun`` describes (its environment variables), or takes the
    one already made (by `train_and_evaluate_mp` for ``learner_gpus``, or by the caller). Sets the
    rank's device: its entry of ``learner_gpus`` where that is given; else under torchrun a CUDA
    device is the rank's own GPU, ``cuda:LOCAL_RANK``, and in a group the caller made, the GPU the
    caller chose with ``torch.cuda.set_device``. Ranks other than 0 print nothing, and all take
    rank 0's seed, so that a drawn seed is one seed.
    """
    made_here = not dist.is_initialized()
    if made_here and not launched_by_torchrun():
        return None
    local_rank = int(os.environ["LOCAL_RANK"]) if launched_by_torchrun() else dist.get_rank()
    if args.learner_gpus:
        if local_rank >= len(args.learner_gpus):
            raise ValueError(f"learner_gpus={tuple(args.learner_gpus)} names {len(args.learner_gpus)} learners on this machine, "
                             f"but this is learner {local_rank} of it: give torchrun --nproc-per-node {len(args.learner_gpus)}, "
                             f"or leave learner_gpus unset (each rank then takes cuda:LOCAL_RANK)")
        args.device = gpu_device(args.learner_gpus[local_rank])
    elif torch.device(args.device).type == "cuda":
        args.device = rank_gpu(local_rank) if launched_by_torchrun() else f"cuda:{torch.cuda.current_device()}"
    if torch.device(args.device).type == "cuda":
        torch.cuda.set_device(args.device)
    if made_here:
        dist.init_process_group(backend_for(args.device), timeout=datetime.timedelta(seconds=COLLECTIVE_TIMEOUT_SECONDS))
    if dist.get_world_size() == 1:
        return None
    group = LearnerGroup(args.device)
    group.made_here = made_here
    try:
        args.random_seed = group.broadcast_object(args.random_seed)
    except BaseException:
        leave_learners(group)
        raise
    args.if_print = args.if_print and group.is_main
    return group


def leave_learners(group: LearnerGroup | None, finished: bool = False) -> None:
    """Ends the process group where `join_learners` made it (one made by the caller is the caller's to end).

    Every rank of a run that `finished` calls it so: the ranks first meet at a barrier, because Gloo
    may abort a rank (SIGABRT, and so a failed exit status after a good run) whose peer closes its
    sockets while it is still tearing its own down. After a failure no rank waits for the others.
    """
    if group is None or not dist.is_initialized():
        return
    try:
        if finished:
            dist.barrier()
    except RuntimeError:  # a rank that failed after the last round: its own error is the one to see
        pass
    finally:  # still initialised? a watch thread (parallel.watch_ranks) may have aborted the group meanwhile
        if group.made_here and dist.is_initialized():
            dist.destroy_process_group()
