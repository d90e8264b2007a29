"""Small files in CIFAR-10's binary format for the e2e tests (no copy of CIFAR can be downloaded
here): 5 training batches and a test batch of 3x32x32 images whose class sets their colour, so a
model that reads the three channels learns them.

usage: make_cifar.py DIR [TRAIN_PER_BATCH [TEST]]
"""
import random, sys
out = sys.argv[1]
per_batch = int(sys.argv[2]) if len(sys.argv) > 2 else 120
n_test = int(sys.argv[3]) if len(sys.argv) > 3 else 100
rng = random.Random(11)
def batch(name, n):
    rec = bytearray()
    for _ in range(n):
        label = rng.randrange(10)
        # class k: a colour of its own (red level from k, green and blue from k's parity and
        # half), with pixel noise
        means = [30 + 20 * label, 70 + 110 * (label & 1), 70 + 110 * (label >= 5)]
        rec.append(label)
        for c in range(3):
            rec.extend(max(0, min(255, int(rng.gauss(means[c], 25)))) for _ in range(1024))
    open(f"{out}/{name}", "wb").write(rec)
for b in range(1, 6):
    batch(f"data_batch_{b}.bin", per_batch)
batch("test_batch.bin", n_test)
