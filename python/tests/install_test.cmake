# CTest python_install: `cmake --install` into a fresh prefix, then `import podsim` from there
# with no build tree on the path; the package must find <prefix>/share/podsim by itself.
# -DBUILD=<build dir> -DPREFIX=<empty dir> -DPYTHON=<interpreter> -DSITE=<lib/python3.X/dist-packages>
file(REMOVE_RECURSE ${PREFIX})
execute_process(COMMAND ${CMAKE_COMMAND} --install ${BUILD} --prefix ${PREFIX}
                OUTPUT_QUIET RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "cmake --install failed (${rc})")
endif()
execute_process(
  COMMAND ${CMAKE_COMMAND} -E env --unset=PODSIM_DATA_DIR PYTHONPATH=${PREFIX}/${SITE}
          ${PYTHON} -c "import podsim; t = podsim.Topology('tpu-v3-8'); print('installed', podsim.__file__, 'data', podsim.data_dir(), 'cores', t.num_cores)"
  WORKING_DIRECTORY ${PREFIX}
  OUTPUT_VARIABLE out ERROR_VARIABLE err RESULT_VARIABLE rc)
message("${out}${err}")
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "import podsim from the install failed (${rc})")
endif()
