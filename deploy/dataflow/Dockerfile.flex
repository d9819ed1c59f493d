# Flex template launcher image: builds the job graph of one stage and submits it to
# Dataflow. Workers run the image of ./Dockerfile (passed as sdk_container_image).
#
#   docker build -f deploy/dataflow/Dockerfile.flex -t REGION-docker.pkg.dev/PROJECT/openmsd/launcher:0.1.0 .
#   gcloud dataflow flex-template build gs://BUCKET/templates/openmsd-stage.json \
#       --image REGION-docker.pkg.dev/PROJECT/openmsd/launcher:0.1.0 \
#       --sdk-language PYTHON --metadata-file deploy/dataflow/metadata.json
FROM gcr.io/dataflow-templates-base/python311-template-launcher-base

ARG BEAM_VERSION=2.77.0
WORKDIR /template
COPY setup.py README.md ./
COPY openmsd_build ./openmsd_build
COPY pipelines ./pipelines
COPY schemas ./schemas
COPY deploy/dataflow/flex_main.py ./flex_main.py
RUN pip install --no-cache-dir "apache-beam[gcp]==${BEAM_VERSION}" ".[gcp]"

ENV FLEX_TEMPLATE_PYTHON_PY_FILE=/template/flex_main.py
ENV FLEX_TEMPLATE_PYTHON_SETUP_FILE=/template/setup.py
# Dependencies are already in the worker image: do not let the launcher stage them again.
ENV PIP_NO_DEPS=True
