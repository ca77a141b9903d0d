# Training end to end: equivalence across device counts, determinism, resume, CLI.
add_executable(test_equivalence ${CMAKE_CURRENT_SOURCE_DIR}/train/test_equivalence.c)
target_link_libraries(test_equivalence PRIVATE mgc_passes mgc_runtime)
foreach(model mnist_cnn mlp)
  add_test(NAME train_equivalence_${model}
           COMMAND test_equivalence ${MGC_SRC}/examples/${model}.mg ${MGC_SRC}/stdlib)
  set_tests_properties(train_equivalence_${model} PROPERTIES SKIP_RETURN_CODE 77 TIMEOUT 300)
endforeach()
foreach(alg one-device hierarchical)
  add_test(NAME train_equivalence_mlp_${alg}
           COMMAND test_equivalence ${MGC_SRC}/examples/mlp.mg ${MGC_SRC}/stdlib ${alg})
  set_tests_properties(train_equivalence_mlp_${alg} PROPERTIES SKIP_RETURN_CODE 77 TIMEOUT 300)
endforeach()
# issue 10: the all-reduce of a bucket overlaps the compute stream; one bucket
# per gradient (--bucket-bytes 1) and a 300,000-class layer once raced
add_test(NAME train_equivalence_mnist_cnn_bucket1
         COMMAND test_equivalence ${MGC_SRC}/examples/mnist_cnn.mg ${MGC_SRC}/stdlib --bucket-bytes 1)
add_test(NAME train_equivalence_wide_logits
         COMMAND test_equivalence ${MGC_SRC}/tests/train/wide_logits.mg ${MGC_SRC}/stdlib --synthetic 300000 --steps 6)
set_tests_properties(train_equivalence_mnist_cnn_bucket1 train_equivalence_wide_logits
                     PROPERTIES SKIP_RETURN_CODE 77 TIMEOUT 300)
# issue 12: batch_norm with sync equals 1 device (params and moving statistics);
# without sync, replicas normalize by their own batch and must differ
add_test(NAME train_equivalence_sync_bn
         COMMAND test_equivalence ${MGC_SRC}/tests/train/sync_bn.mg ${MGC_SRC}/stdlib)
add_test(NAME train_equivalence_local_bn_differs
         COMMAND test_equivalence ${MGC_SRC}/tests/train/local_bn.mg ${MGC_SRC}/stdlib --expect-differ)
set_tests_properties(train_equivalence_sync_bn train_equivalence_local_bn_differs
                     PROPERTIES SKIP_RETURN_CODE 77 TIMEOUT 300)
# issue 12, convolutions: MobileNet (depthwise-separable blocks, synchronized
# batch_norm) and conv2d_transpose with a grouped dilated conv2d equal 1 device.
# MobileNet for 2 steps only: with ~1M relus per step, rounding differences of
# 1e-6 flip a unit at the kink within a few steps (step 3 on 4 devices, step 11
# on 2), a discrete gradient change that the batch_norm betas (whose gradients
# nearly cancel) and Adam amplify to 1e-4..1e-2; with tanh in place of relu the
# same network stays within 2.5e-5 over 20 steps, and conv_transpose.mg
# (smooth) within 2e-7
add_test(NAME train_equivalence_mobilenet
         COMMAND test_equivalence ${MGC_SRC}/examples/mobilenet.mg ${MGC_SRC}/stdlib --steps 2)
add_test(NAME train_equivalence_conv_transpose
         COMMAND test_equivalence ${MGC_SRC}/tests/train/conv_transpose.mg ${MGC_SRC}/stdlib)
set_tests_properties(train_equivalence_mobilenet train_equivalence_conv_transpose
                     PROPERTIES SKIP_RETURN_CODE 77 TIMEOUT 300)
