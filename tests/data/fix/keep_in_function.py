import os

import torch


def main(gpu):
    torch.cuda.init()
    os.environ["CUDA_VISIBLE_DEVICES"] = "1"
