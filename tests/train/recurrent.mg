# recurrent.mg - the sequence layers of issue 13 in one model: an lstm and a
# gru over f32 [b, t, f] sequences (every step), the causal mask, a per-token
# cross-entropy and perplexity; 2 and 4 devices must train what 1 device
# trains (tests/train.cmake, --synthetic: labels i32 [b, t] in [0, 5))
use nn

model recurrent {
  input x: f32[batch, 6, 4]
  input label: i32[batch, 6]
  h = lstm(x, 6, return_sequences: true)               # [b, 6, 6]
  h = h * causal_mask(6)                               # step s keeps units <= s
  h = gru(h, 8, return_sequences: true)                # [b, 6, 8]
  logits = prim.reshape(dense(prim.reshape(h, batch * 6, 8), 5), batch, 6, 5)
  last = gru(x, 3)                                     # [b, 3]: the last step only
  logits = logits + prim.reshape(dense(last, 5), batch, 1, 5)
  loss = sparse_softmax_cross_entropy(logits, label)
  metric perplexity = perplexity(logits, label)
}

train recurrent {
  optimizer = adam(learning_rate: 0.01)
  batch = 64 global
}
