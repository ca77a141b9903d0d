# text_classifier.mg - issue 13: bench/text_classifier.sh's classifier (a
# 10,000 x 64 embedding, the mean over the tokens, dense relu) with a
# bag-of-words branch through one_hot beside it and 10,000 classes, so that
# --synthetic 10000 draws ids over the whole table: 2 and 4 devices must train
# what 1 device trains (tests/train.cmake)
use nn

model text_classifier {
  input tokens: i32[batch, 16]
  input label: i32[batch]
  e = embedding(tokens, 10000, 64)
  bow = prim.reduce_mean(one_hot(tokens, 10000), axes: 2)
  h = dense(prim.reduce_mean(e, axes: 2), 64, activation: relu) + dense(bow, 64)
  logits = dense(h, 10000)
  loss = sparse_softmax_cross_entropy(logits, label)
  metric accuracy = sparse_categorical_accuracy(logits, label)
}

train text_classifier {
  optimizer = adam(learning_rate: 0.01)
  batch = 64 global
}
