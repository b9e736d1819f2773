"""can-has-gpu: the workshop participant's GPU tool, and the lease reaper of the DRA lab.

Both run on lab nodes from a venv that the participant_tool role installs from
wheels (the offline mirror's, or the package index). They share the DRA model
and the pending-claim explainer with the collection: the wheel carries
plugins/module_utils as ansible_collections.dralab.workshop.plugins.module_utils.
"""

__version__ = "0.1.0"
