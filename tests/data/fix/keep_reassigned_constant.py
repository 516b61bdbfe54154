import os

import torch

GPU = "0"
torch.cuda.init()
os.environ["CUDA_VISIBLE_DEVICES"] = GPU
GPU = "1"
