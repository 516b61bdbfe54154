"""NVML ids as CUDA_VISIBLE_DEVICES are right only in PCI order: a warning without CUDA_DEVICE_ORDER."""
import os

import GPUtil

if "CUDA_VISIBLE_DEVICES" in os.environ:  # (CUD010: a restriction the process was given is kept)
    raise SystemExit("already restricted")
DEVICE_ID = GPUtil.getFirstAvailable(order="memory")[0]
os.environ["CUDA_DEVICE_ORDER"] = "PCI_BUS_ID"
os.environ["CUDA_VISIBLE_DEVICES"] = str(DEVICE_ID)  # the least busy GPU
