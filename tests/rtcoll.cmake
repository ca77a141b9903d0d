# CPU backend (streams, events, errors) and collectives (ring, one-device,
# hierarchical, broadcast, timeouts); MPI across processes; all-reduce bench.
add_executable(test_rt_backend ${MGC_SRC}/tests/rtcoll/test_backend.c)
target_link_libraries(test_rt_backend PRIVATE mgc_runtime)
add_test(NAME rtcoll_backend COMMAND test_rt_backend)

add_executable(test_rt_collectives ${MGC_SRC}/tests/rtcoll/test_collectives.c)
target_link_libraries(test_rt_collectives PRIVATE mgc_runtime)
add_test(NAME rtcoll_collectives COMMAND test_rt_collectives)

# bench/allreduce.c: all-reduce algbw/busbw beside memcpy (run by hand, not a test)
add_executable(bench_allreduce ${MGC_SRC}/bench/allreduce.c)
target_link_libraries(bench_allreduce PRIVATE mgc_runtime)
