import torch
import os

VISIBLE = "CUDA_VISIBLE_DEVICES"
GPU = "1"
torch.zeros(1, device="cuda")
os.environ[VISIBLE] = GPU
os.environ.setdefault("CUDA_DEVICE_ORDER", "PCI_BUS_ID")
