"""NVML ids as CUDA_VISIBLE_DEVICES are right only in PCI order: a warning without CUDA_DEVICE_ORDER."""
import os

import GPUtil

DEVICE_ID = GPUtil.getFirstAvailable(order="memory")[0]
os.environ["CUDA_DEVICE_ORDER"] = "PCI_BUS_ID"
os.environ["CUDA_VISIBLE_DEVICES"] = str(DEVICE_ID)  # the least busy GPU
