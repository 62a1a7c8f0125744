"""The argparse pieces every command shares: counts, the options that pick one run of a dump tree, one file given
two ways, the Dask cluster options."""

from __future__ import annotations

import argparse
import contextlib
import sys
from typing import Iterator


def count(text: str) -> int:
    """argparse type for counts that may be 0 (threads: 0 = all cores): a clear usage error below 0."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
    if value < 0:
        raise argparse.ArgumentTypeError(f"{value} is below 0")
    return value


def gt_sample_arg(text: str) -> int | dict[int, int]:
    """`--gt-sample K` or `--gt-sample I:K,I:K`."""
    try:
        if ":" not in text:
            return count(text)
        pairs = [item.split(":") for item in text.split(",") if item]
        return {count(i): count(k) for i, k in pairs}
    except (ValueError, argparse.ArgumentTypeError):
        raise argparse.ArgumentTypeError(f"{text!r}: give K, or ITERATION:K pairs such as 0:1,1:0") from None


def positive(text: str) -> int:
    """argparse type for counts of at least 1 (rows per file, ...)."""
    value = count(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"{value} is below 1")
    return value


def add_run_selection(p: argparse.ArgumentParser, *, gt_sample: bool = True) -> None:
    """The options that pick one run of a dump tree (-l) and the ground-truth sample it pairs with, the same in
    every command that reads one (`run_selection` reads them back)."""
    p.add_argument("--time", metavar="YYYYMMDDhhmmss", help="select the dump run by its time folder")
    p.add_argument("--device", dest="device_id", type=int, help="select the device id")
    p.add_argument("--model", dest="model_name", help="select the model name")
    p.add_argument("--model-id", type=int, help="select the model id")
    p.add_argument("--iteration", "--data-index", dest="data_index", type=int, help="select the iteration")
    if gt_sample:
        p.add_argument("--gt-sample", type=gt_sample_arg, default=None, metavar="K|I:K,...",
                       help="pair every iteration with the ground truth's sample folder K/, or iteration I with "
                            "folder K/ (default: iteration k with folder k/, as golden writes several samples)")


def run_selection(args: argparse.Namespace) -> dict:
    """What `add_run_selection` parsed, as the keyword arguments the library takes (time, device_id, model_name,
    model_id, data_index)."""
    return {key: getattr(args, key, None) for key in ("time", "device_id", "model_name", "model_id", "data_index")}


def one_file(positional: str | None, option: str | None) -> str:
    """The file given either as the first argument or with -i/--input (view and shape take it both ways)."""
    from dumpcmp.errors import ConfigError

    if positional is not None and option is not None and positional != option:
        raise ConfigError(f"two files given ({positional} and -i {option}); give one")
    if positional is None and option is None:
        raise ConfigError("no dump file: give it as the first argument or with -i FILE")
    return positional if positional is not None else option  # type: ignore[return-value]


def add_cluster_options(p: argparse.ArgumentParser, what: str) -> None:
    """--cluster and --cluster-timeout; `what`: what the workers do ("compare", "replay")."""
    p.add_argument("--cluster", metavar="ADDRESS",
                   help=f"{what} on a Dask cluster: a scheduler's tcp://HOST:PORT, or local:N for N worker processes "
                        'here (pip install "dumpcmp[cluster]"; docs/cluster.md)')
    p.add_argument("--cluster-timeout", type=float, default=60.0, metavar="SECONDS",
                   help="with --cluster: how long the cluster may have no worker before the rows not done yet "
                        "fail, saying so (default 60)")


@contextlib.contextmanager
def cluster_session(args: argparse.Namespace) -> Iterator[object]:
    """The Dask cluster of --cluster, connected (None without it), its Dask log lines kept off the terminal, the
    dashboard's address printed; closed when the block ends (dumpcmp.comparison.cluster)."""
    if args.cluster is None:
        yield None
        return
    from dumpcmp.comparison.cluster import connect, quiet_dask_logs
    from dumpcmp.errors import ConfigError

    if not args.cluster_timeout > 0:
        raise ConfigError(f"--cluster-timeout {args.cluster_timeout:g}: give a number of seconds above 0")
    with connect(args.cluster) as cluster:
        quiet_dask_logs()
        cluster.timeout = args.cluster_timeout
        if not args.quiet and cluster.dashboard:
            print(f"dumpcmp: cluster {cluster.address}, dashboard {cluster.dashboard}", file=sys.stderr)
        yield cluster
