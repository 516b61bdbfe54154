import os

import pynvml


def pick():
    pynvml.nvmlInit()
    handle = pynvml.nvmlDeviceGetHandleByIndex(1)
    index = pynvml.nvmlDeviceGetIndex(handle)
    # the GPU NVML calls 1
    os.environ["CUDA_VISIBLE_DEVICES"] = str(index)
