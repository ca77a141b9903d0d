# lists.mg - `a + b` on lists makes a new list, as in Python, however the
# elaborator shares buffers: a list appended to in place leaves every other
# list made from the same one as it was
use nn

model lists {
  input x: f32[batch, 3]
  input label: i32[batch]
  base = [2, 3]
  grown = base + [4]     # a new buffer with room to grow
  wide = grown + [7]     # appended in place
  narrow = grown + [5]   # grown's buffer is filled past it: a copy
  again = wide + wide    # a list appended to itself
  steps = []
  for i in range(40) {   # the buffer moves as it grows
    steps = steps + [i]
  }
  h = dense(x, wide[3])                              # 7
  h = dense(h, narrow[3] + len(grown))               # 5 + 3
  h = dense(h, again[7] + again[2] + len(again))     # 7 + 4 + 8
  logits = dense(h, steps[39] - len(steps) + base[1] + narrow[2] + len(base))  # 39 - 40 + 3 + 4 + 2
  loss = sparse_softmax_cross_entropy(logits, label)
}

train lists {
  optimizer = sgd
  batch = 4 per replica
}
