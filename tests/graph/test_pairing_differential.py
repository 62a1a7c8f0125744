"""Pairing held against main's before issue #35's faster rows (4cfbae7): 300 seeded random graphs
(tests/helpers/pairing_cases.py: fused and inserted ops, Cast/TransData chains, quant/dequant pairs, L1 groups,
explicit origins, sanitised names, two graphs, a `-q` merge; device ops missing from the graph, duplicate dumps of
mixed order keys, counts unlike the graph's; missing, extra and sanitised ground-truth keys), each paired with its
graph and without one. The digest of every field of every row was made by 4cfbae7's pairing; 6,000 such cases were
compared with it directly when the rows were made faster. Device-vs-device pairing likewise (300 cases here, 3,000
compared directly)."""

from __future__ import annotations

import hashlib

import pytest

from dumpcmp.graph import pairing
from dumpcmp.graph.graph_json import merge, parse_graph
from dumpcmp.graph.pairing import DeviceOp, pair_device_to_device, pair_with_ground_truth
from helpers import pairing_cases

# sha256 over the 300 cases' digests (with the graph, then without), as 4cfbae7 pairs them
MAIN_DIGEST = "b9c5df960e987823e34ad5b67d1f86df499ae5b66daa7c74bd500a46dc030fbd"


@pytest.mark.parametrize("recent", [None, 1, 2])
def test_300_random_cases_pair_as_before(recent, monkeypatch):
    if recent is not None:  # outputs resolved again once forgotten: the same rows
        monkeypatch.setattr(pairing, "_RECENT_OUTPUTS", recent)
    total = hashlib.sha256()
    for seed in range(300):
        document, quant, device_args, truth = pairing_cases.case(seed)
        graph = parse_graph(document)
        if quant is not None:
            graph = merge(graph, parse_graph(quant))
        device = [DeviceOp(name, op_type, n_in, n_out, order=order, ref=f"d{k}")
                  for k, (name, op_type, n_in, n_out, order) in enumerate(device_args)]
        with_graph = pairing_cases.digest(pair_with_ground_truth(device, truth, graph))
        without = pairing_cases.digest(pair_with_ground_truth(device, truth, None))
        total.update((with_graph + without).encode())
    assert total.hexdigest() == MAIN_DIGEST


# sha256 over 300 device-vs-device cases' digests (`pairing_cases.device_pair_case`), as 4cfbae7 pairs them
MAIN_DEVICE_DIGEST = "dbeeca9108db4327f03a546e5d644e45d36a4b6bbdd21818fe8dc9e1d548e47f"


def test_300_random_device_to_device_cases_pair_as_before():
    total = hashlib.sha256()
    for seed in range(300):
        left, right = pairing_cases.device_pair_case(seed)
        pairs = pair_device_to_device(*([DeviceOp(name, op_type, n_in, n_out, order=order, ref=ref)
                                         for name, op_type, n_in, n_out, order, ref in side] for side in (left, right)))
        total.update(pairing_cases.digest(pairs).encode())
    assert total.hexdigest() == MAIN_DEVICE_DIGEST
