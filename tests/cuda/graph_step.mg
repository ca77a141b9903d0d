# graph_step.mg - issue 15: a model whose every train step depends on the step
# counter (dropout's mask, AdamW's bias correction and a cosine schedule with
# warmup), for scripts/gpu-check.sh: trained with CUDA graphs (captured once,
# replayed) and with --no-cuda-graphs, the params must agree; a graph replayed
# with a frozen step would differ from the second step on.
use nn

model graph_step {
  input image: f32[batch, 28, 28, 1]
  input label: i32[batch]

  x      = dense(flatten(image), 64, activation: relu)
  x      = dropout(x, 0.3)
  logits = dense(x, 10)

  loss            = sparse_softmax_cross_entropy(logits, label)
  metric accuracy = sparse_categorical_accuracy(logits, label)
}

train graph_step {
  optimizer = adamw(learning_rate: cosine_decay(1e-3, decay_steps: 6, alpha: 0.1,
                                                warmup_target: 0.01, warmup_steps: 2))
  batch     = 32 per replica
}
