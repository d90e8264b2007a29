/* The image problems' shared glue (problems/images.c). */
#ifndef DT_PROBLEMS_IMAGES_IMPL_H
#define DT_PROBLEMS_IMAGES_IMPL_H

#include "dt/problem.h"

/* out's train and test samples as views of ds's images, its file list from ds; out owns ds. */
void problem_image_data(dt_dataset *ds, dt_data *out);

#endif
