"""Write the notebook fixtures (nbformat 4.5 JSON, as Jupyter saves them): run from the repository root."""
import json

def save(path, cells):
    out = []
    for i, (kind, text) in enumerate(cells):
        lines = text.split("\n")
        source = [l + "\n" for l in lines[:-1]] + [lines[-1]]
        cell = {"cell_type": kind, "id": f"c{i}", "metadata": {}, "source": source}
        if kind == "code":
            cell.update(execution_count=None, outputs=[])
        out.append(cell)
    doc = {"cells": out, "metadata": {"kernelspec": {"display_name": "Python 3", "language": "python", "name": "python3"}}, "nbformat": 4, "nbformat_minor": 5}
    with open(path, "w") as fh:
        json.dump(doc, fh, indent=1)
        fh.write("\n")

F = "fixtures/"
save(F + "CUD009/bad_shell_export.ipynb", [
    ("markdown", "# Pick a GPU\n`!export` runs in a subshell."),
    ("code", "!export CUDA_VISIBLE_DEVICES=1  # CUD009"),
    ("code", "%%bash\n# choose the GPU\nexport CUDA_VISIBLE_DEVICES=0  # CUD009"),
    ("code", "import torch\nif True:\n    !export PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True  # CUD009\nprint(torch.cuda.is_available())"),
])
save(F + "CUD009/good_shell_and_magics.ipynb", [
    ("markdown", "Shell lines that use what they export, and magics that do not break parsing."),
    ("code", "%env CUDA_VISIBLE_DEVICES=1\n%matplotlib inline\n%pip install torch"),
    ("code", "!export CUDA_VISIBLE_DEVICES=1 && python train.py\n!CUDA_VISIBLE_DEVICES=1 python train.py\nfiles = !ls\n!nvidia-smi"),
    ("code", "%%bash\nexport CUDA_VISIBLE_DEVICES=0\npython train.py"),
    ("code", "%%time\nimport os\nimport torch\nx = torch.zeros(3, device='cuda')"),
    ("code", "%time y = x * 2\ntorch.cuda.is_available?"),
])
save(F + "CUD001/bad_notebook_cells.ipynb", [
    ("markdown", "# Training"),
    ("code", "import os\nimport torch\nuse_gpu = torch.cuda.is_available()"),
    ("raw", "raw cell"),
    ("code", "%matplotlib inline\nos.environ[\"CUDA_VISIBLE_DEVICES\"] = \"1\"  # CUD001 witness: 2:3, 4:2"),
])
save(F + "CUD001/good_notebook_write_cell_first.ipynb", [
    ("markdown", "The write cell comes before the cell that initializes CUDA."),
    ("code", "%env CUDA_DEVICE_ORDER=PCI_BUS_ID\nimport os\nos.environ[\"CUDA_VISIBLE_DEVICES\"] = \"1\""),
    ("code", "import torch\ndevice = torch.device(\"cuda\" if torch.cuda.is_available() else \"cpu\")"),
])
save(F + "CUD002/bad_notebook_alloc_conf.ipynb", [
    ("code", "import os\nimport torch\nx = torch.randn(2, 2).to(\"cuda\")"),
    ("markdown", "Too late: the allocator is configured."),
    ("code", "os.environ[\"PYTORCH_CUDA_ALLOC_CONF\"] = \"expandable_segments:True\"  # CUD002 witness: 1:3, 3:1"),
])
