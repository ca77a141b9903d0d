# grad: autodiff and optimizer passes against a double-precision reference evaluator.
add_executable(test_grad ${MGC_SRC}/tests/grad/test_grad.c ${MGC_SRC}/tests/grad/ref_eval.c ${MGC_SRC}/tests/grad/ref_eval_optim.c)
target_link_libraries(test_grad PRIVATE mgc_passes mgc_ir m)
add_test(NAME grad COMMAND test_grad)
# issue 12: stdlib layers made of primitives, against references and finite differences
add_executable(test_layers ${MGC_SRC}/tests/grad/test_layers.c ${MGC_SRC}/tests/grad/ref_eval.c ${MGC_SRC}/tests/grad/ref_eval_optim.c)
target_link_libraries(test_layers PRIVATE mgc_passes mgc_ir m)
add_test(NAME grad_layers COMMAND test_layers ${MGC_SRC}/stdlib)

# the stdlib's activations, losses and metrics (issue 12) against Keras' formulas
add_executable(test_nn ${MGC_SRC}/tests/grad/test_nn.c ${MGC_SRC}/tests/grad/ref_eval.c ${MGC_SRC}/tests/grad/ref_eval_optim.c)
target_link_libraries(test_nn PRIVATE mgc_passes mgc_ir m)
add_test(NAME grad_nn COMMAND test_nn ${MGC_SRC}/stdlib)
