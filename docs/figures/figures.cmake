# The handouts' figures: docs/figures/make_figures.py draws them as SVG (Python only, no packages)
# into ${CMAKE_CURRENT_BINARY_DIR}/figures, Doxyfile's IMAGE_PATH, from which Doxygen copies the
# files the handouts name with `\image html NAME.svg`. Included by docs/CMakeLists.txt, which adds
# KIT_DOCS_FIGURES_STAMP to the docs target's DEPENDS. The measured figures read
# docs/figures/data/ (written by docs/figures/measure.py on a GPU); each comes with a fragment,
# NAME.md in the same folder (on EXAMPLE_PATH), that a handout includes to show it.
set(KIT_DOCS_FIGURES_DIR ${CMAKE_CURRENT_BINARY_DIR}/figures)
set(KIT_DOCS_FIGURES_STAMP ${KIT_DOCS_FIGURES_DIR}/figures.stamp)
file(GLOB kit_figure_data CONFIGURE_DEPENDS ${CMAKE_CURRENT_SOURCE_DIR}/figures/data/*.csv)
add_custom_command(
  OUTPUT ${KIT_DOCS_FIGURES_STAMP}
  COMMAND ${Python3_EXECUTABLE} ${CMAKE_CURRENT_SOURCE_DIR}/figures/make_figures.py
          ${KIT_DOCS_FIGURES_DIR}
  COMMAND ${CMAKE_COMMAND} -E touch ${KIT_DOCS_FIGURES_STAMP}
  DEPENDS ${CMAKE_CURRENT_SOURCE_DIR}/figures/make_figures.py ${kit_figure_data}
  COMMENT "Drawing the handouts' figures (docs/figures/make_figures.py)"
  VERBATIM)
add_custom_target(docs_figures DEPENDS ${KIT_DOCS_FIGURES_STAMP})
