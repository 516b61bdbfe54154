import os

import torch

kind = "gpu" if torch.cuda.is_available() else "cpu"
os.environ["CUDA_VISIBLE_DEVICES"] = kind and os.environ.get("GPU", "0")
