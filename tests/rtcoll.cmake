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

# MPI: the process level of hierarchical collectives, across 3 processes
if(MPI_C_FOUND)
  add_executable(test_rt_mpi ${MGC_SRC}/tests/rtcoll/test_mpi.c)
  target_link_libraries(test_rt_mpi PRIVATE mgc_runtime)
  set(RT_MPIRUN ${MPIEXEC_EXECUTABLE} --allow-run-as-root --oversubscribe -np 3)
  add_test(NAME rtcoll_mpi COMMAND ${RT_MPIRUN} $<TARGET_FILE:test_rt_mpi>)
  # rank 2 never joins: ranks 0 and 1 each report the timeout (mpirun itself fails)
  string(JOIN " " RT_MPIRUN_LINE ${RT_MPIRUN})
  add_test(NAME rtcoll_mpi_timeout
           COMMAND sh -c "${RT_MPIRUN_LINE} $<TARGET_FILE:test_rt_mpi> timeout 2>&1 | tee /dev/stderr | grep -c 'timed out as expected' | grep -qx 2"
           )
  # rank 2 is killed (SIGKILL) before the collective: with --enable-recovery
  # mpirun lets ranks 0 and 1 live to report the timeout (without it, mpirun
  # kills them itself as soon as it notices the death)
  add_test(NAME rtcoll_mpi_peer_died
           COMMAND sh -c "${RT_MPIRUN_LINE} --enable-recovery $<TARGET_FILE:test_rt_mpi> die 2>&1 | tee /dev/stderr | grep -c 'timed out as expected' | grep -qx 2"
           )
  set_tests_properties(rtcoll_mpi rtcoll_mpi_timeout rtcoll_mpi_peer_died PROPERTIES TIMEOUT 60)
endif()

# issue 14: device threads pinned to cores of their own (and the off switch)
add_executable(test_rt_pin ${MGC_SRC}/tests/rtcoll/test_pin.c)
target_link_libraries(test_rt_pin PRIVATE mgc_runtime)
add_test(NAME rtcoll_pin COMMAND test_rt_pin)
