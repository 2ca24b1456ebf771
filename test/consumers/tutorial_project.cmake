# The custom store tutorial (docs/tutorial-custom-store.md) as a user
# follows it: an empty directory gets the page's CMakeLists.txt, shop.hpp
# and main.cpp, and builds and runs against an installed strata.
#
#   cmake -DEXAMPLES=<docs/examples> -DWORK=<scratch dir> <run_consumer.cmake's options> -P tutorial_project.cmake
set(project_dir ${WORK}-project)
file(REMOVE_RECURSE ${project_dir})
file(MAKE_DIRECTORY ${project_dir})
file(COPY_FILE ${EXAMPLES}/tutorial_project/CMakeLists.txt ${project_dir}/CMakeLists.txt)
file(COPY_FILE ${EXAMPLES}/shop.hpp ${project_dir}/shop.hpp)
file(COPY_FILE ${EXAMPLES}/two_tables.cpp ${project_dir}/main.cpp)
set(CONSUMER ${project_dir})
set(APP shop)
include(${CMAKE_CURRENT_LIST_DIR}/run_consumer.cmake)
