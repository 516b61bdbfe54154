import os

import torch

os.environ["CUDA_VISIBLE_DEVICES"] = "0"
torch.cuda.init()
os.environ["CUDA_VISIBLE_DEVICES"] = "1"
