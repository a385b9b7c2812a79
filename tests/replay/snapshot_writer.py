"""Writes PyTorch memory snapshots the way torch.cuda.memory._dump_snapshot
does: pickle.dump of the _snapshot() dict (the layout report/README.md
describes), built here from a short script of allocations so tests can
replay a snapshot with known results without PyTorch or a GPU."""

import json
import pickle

MiB = 1 << 20

_FRAME = {"name": "forward", "filename": "model.py", "line": 42}


class SnapshotWriter:
    """Records alloc/free events for one device and the final segments."""

    def __init__(self, device=0, free_completed=True):
        self.device = device
        self.free_completed = free_completed
        self.entries = []
        self.segments = []
        self.time_us = 1772552894612373

    def _entry(self, action, addr, size, stream):
        self.time_us += 17
        self.entries.append({"action": action, "addr": addr, "size": size,
                             "stream": stream, "time_us": self.time_us,
                             "frames": [dict(_FRAME)]})

    def alloc(self, addr, size, stream=0):
        self._entry("alloc", addr, size, stream)

    def free(self, addr, size, stream=0):
        """A free as PyTorch records it: requested, then completed."""
        self._entry("free_requested", addr, size, stream)
        if self.free_completed:
            self._entry("free_completed", addr, size, stream)

    def segment_alloc(self, addr, size, stream=0):
        self._entry("segment_alloc", addr, size, stream)

    def segment(self, address, blocks, stream=0, segment_type="large"):
        """A segment of the final state; blocks are (size, state, requested)."""
        block_dicts, offset = [], 0
        for size, state, requested in blocks:
            block_dicts.append({"address": address + offset, "size": size,
                                "requested_size": requested, "state": state,
                                "frames": []})
            offset += size
        active = sum(b["size"] for b in block_dicts if b["state"] != "inactive")
        self.segments.append({
            "device": self.device, "address": address, "total_size": offset,
            "allocated_size": active, "active_size": active,
            "requested_size": sum(b["requested_size"] for b in block_dicts
                                  if b["state"] != "inactive"),
            "stream": stream, "segment_type": segment_type,
            "segment_pool_id": (0, 0), "is_expandable": False,
            "frames": [], "blocks": block_dicts})

    def snapshot(self):
        traces = [[] for _ in range(self.device + 1)]
        traces[self.device] = self.entries
        return {
            "segments": sorted(self.segments, key=lambda s: s["address"]),
            "device_traces": traces,
            "allocator_settings": {
                "PYTORCH_CUDA_ALLOC_CONF": "", "max_split_size": -1,
                "garbage_collection_threshold": 0.0,
                "expandable_segments": False,
                "roundup_power2_divisions": {str(1 << i): 0 for i in range(16)},
            },
            "external_annotations": [],
        }

    def write(self, path, protocol):
        with open(path, "wb") as out:
            pickle.dump(self.snapshot(), out, protocol=protocol)

    def write_json(self, path):
        """The JSON form current memory_viz builds accept (tuples become lists)."""
        with open(path, "w", encoding="utf-8") as out:
            json.dump(self.snapshot(), out, indent=1)
