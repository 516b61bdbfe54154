import os

import pynvml


def pick():
    if os.environ.get("CUDA_VISIBLE_DEVICES"):  # (CUD010: a restriction the process was given is kept)
        return
    pynvml.nvmlInit()
    handle = pynvml.nvmlDeviceGetHandleByIndex(1)
    index = pynvml.nvmlDeviceGetIndex(handle)
    # the GPU NVML calls 1
    os.environ["CUDA_DEVICE_ORDER"] = "PCI_BUS_ID"
    os.environ["CUDA_VISIBLE_DEVICES"] = str(index)
