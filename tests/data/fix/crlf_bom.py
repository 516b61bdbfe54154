"""Doc."""
import os
import torch
torch.cuda.init()
os.environ["CUDA_VISIBLE_DEVICES"] = "1"  # the café GPU
