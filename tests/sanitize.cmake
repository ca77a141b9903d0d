# sanitize.cmake - in a sanitized build (MGC_SANITIZE=ON), canaries show that each
# kind of finding fails its process with the sanitizer's report (docs/hardening.md).
if(MGC_SANITIZE)
  add_executable(sanitize_canary ${CMAKE_CURRENT_SOURCE_DIR}/sanitize/canary.c)
  foreach(c "overflow;heap-buffer-overflow|insufficient space" "leak;detected memory leaks" "ub;signed integer overflow")
    list(GET c 0 mode)
    list(GET c 1 report)
    add_test(NAME sanitize_catches_${mode}
             COMMAND sh -c "out=$(\"$1\" $2 2>&1); rc=$?; echo \"$out\" | tail -5; [ $rc -ne 0 ] && echo \"$out\" | grep -qE \"$3\""
                     sh $<TARGET_FILE:sanitize_canary> ${mode} ${report})
  endforeach()
endif()
