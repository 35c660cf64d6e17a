#!/usr/bin/env python3
"""make_trace.py - writes conversations.csv, the synthetic trace of
examples/pcie_llm.yaml (standard library only; the same file on every run:
`cd examples/data/pcie_llm && python3 make_trace.py`):

- chat: multi-turn conversations on the resident `chat` model. A
  conversation starts every 40 s on average (Poisson, for 20 minutes), has
  4 to 8 turns, and its first prompt is a 2,048-token system prompt shared
  by every conversation plus a 2,000 to 8,000-token document; each later
  turn resends the whole history (previous prompt + previous answer) plus a
  100 to 600-token question (answers: 100 to 400 tokens), and arrives 20 to 90 s (uniform) after the
  previous one (the user reads and types). Prefix-block ids (one per 512
  tokens, as Mooncake's hash_ids) are equal exactly where the prompts are.
- tail: one-shot requests for the serverless fine-tunes ft-00 .. ft-11,
  Poisson at 1 req/s in all for 20 minutes, each model equally likely,
  500 to 2,000 prompt tokens, 50 to 300 output tokens, no shared prefix.

Columns: arrival_s, prompt_tokens, output_tokens, model, hash_ids.
"""
import random

BLOCK = 512
TAIL_RATE = 1.0
DOC_MIN, DOC_MAX = 2000, 8000
CONV_GAP = 40.0
DURATION = 1200.0
rng = random.Random(20260926)
rows = []
next_id = [1]


def new_ids(n):
    ids = list(range(next_id[0], next_id[0] + n))
    next_id[0] += n
    return ids


system = new_ids(2048 // BLOCK)  # the shared system prompt
t = 0.0
while True:
    t += rng.expovariate(1 / CONV_GAP)
    if t >= DURATION:
        break
    doc = rng.randint(DOC_MIN, DOC_MAX)
    prompt = 2048 + doc
    ids = system + new_ids((prompt - 2048 + BLOCK - 1) // BLOCK)
    at = t
    for turn in range(rng.randint(4, 8)):
        out = rng.randint(100, 400)
        rows.append((at, prompt, out, "chat", list(ids)))
        # next turn: history + answer + question; the ids of the blocks the
        # history fills completely carry over, the rest are new
        q = rng.randint(100, 600)
        full = prompt // BLOCK
        prompt = prompt + out + q
        ids = ids[:full] + new_ids((prompt + BLOCK - 1) // BLOCK - full)
        at += rng.uniform(20, 90)

names = ["ft-%02d" % i for i in range(12)]
w = [1] * len(names)
t = 0.0
while True:
    t += rng.expovariate(TAIL_RATE)
    if t >= DURATION:
        break
    m = rng.choices(names, weights=w)[0]
    rows.append((t, rng.randint(500, 2000), rng.randint(50, 300), m, []))

rows.sort(key=lambda r: r[0])
with open("conversations.csv", "w") as f:
    f.write("arrival_s,prompt_tokens,output_tokens,model,hash_ids\n")
    for a, p, o, m, ids in rows:
        f.write(f"{a:.3f},{p},{o},{m},{' '.join(map(str, ids))}\n")
