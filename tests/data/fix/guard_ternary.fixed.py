import os

import torch

kind = "gpu" if torch.cuda.device_count() > 0 else "cpu"
os.environ["CUDA_VISIBLE_DEVICES"] = kind and os.environ.get("GPU", "0")
