# -*- coding: utf-8 -*-
# Copyright: dralab.workshop contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""A thin REST client for the Kubernetes API built on the official Python client.

Objects come back as plain dicts exactly as the API serves them, so the
analysis code in this collection works the same on live and recorded objects.
KubeClient needs no Ansible: the programs that run on lab nodes (can-has-gpu,
dralab-lease-reaper, dralab-board) use it too, from a venv without ansible-core;
its watch() streams the changes of a list endpoint for the board.
"""

from __future__ import annotations

import base64
import gc
import json
import os
from concurrent.futures import ThreadPoolExecutor

try:
    import yaml
    HAS_YAML = True
except ImportError:  # pragma: no cover - PyYAML comes with ansible-core and the kubernetes client
    HAS_YAML = False

try:
    # Decodes the API's JSON about three times faster than json (a list of 10,000 pods is 24 MB); optional.
    from orjson import loads as json_loads
except ImportError:  # pragma: no cover - depends on the host
    json_loads = json.loads

try:
    from kubernetes import client as k8s_client
    from kubernetes import config as k8s_config
    from kubernetes.client.rest import ApiException
    HAS_KUBERNETES = True
    KUBERNETES_IMPORT_ERROR = None
except ImportError as exc:  # pragma: no cover - depends on the controller
    HAS_KUBERNETES = False
    KUBERNETES_IMPORT_ERROR = exc

    class ApiException(Exception):  # type: ignore[no-redef]
        """Stands in for kubernetes.client.rest.ApiException when the client is missing."""


# The client this collection needs (ResourceV1Api, resource.k8s.io/v1): the same
# as requirements.txt and the k8s_auth doc fragment (tests/unit/test_metadata.py).
KUBERNETES_REQUIREMENT = 'kubernetes>=34.1.0'


def auth_argspec():
    """Authentication options shared by every module of the collection (see the k8s_auth doc fragment)."""
    from ansible.module_utils.basic import env_fallback  # only modules need Ansible

    return dict(
        kubeconfig=dict(type='path', fallback=(env_fallback, ['K8S_AUTH_KUBECONFIG'])),
        context=dict(type='str', fallback=(env_fallback, ['K8S_AUTH_CONTEXT'])),
        host=dict(type='str', fallback=(env_fallback, ['K8S_AUTH_HOST'])),
        api_key=dict(type='str', no_log=True, fallback=(env_fallback, ['K8S_AUTH_API_KEY'])),
        validate_certs=dict(type='bool', default=True, aliases=['verify_ssl'],
                            fallback=(env_fallback, ['K8S_AUTH_VERIFY_SSL'])),
        ca_cert=dict(type='path', aliases=['ssl_ca_cert'], fallback=(env_fallback, ['K8S_AUTH_SSL_CA_CERT'])),
    )


def run_with_client(argument_spec, run):
    """The main() of a module of this collection: parse the options, connect, call run(module, client)."""
    from ansible.module_utils.basic import AnsibleModule  # only modules need Ansible

    # A module builds large trees of API objects without cycles (10,000 pods and claims): the cyclic collector
    # would walk them all again at every threshold, a third of dra_health's time. Mitogen runs modules in an
    # interpreter that lives on, which gets its collector back when the module exits (SystemExit included).
    collecting = gc.isenabled()
    gc.disable()
    try:
        module = AnsibleModule(argument_spec=argument_spec, supports_check_mode=True)
        try:
            client = KubeClient.from_params(module.params)
        except K8sError as exc:
            module.fail_json(msg=str(exc))
        run(module, client)
    finally:
        if collecting:
            gc.enable()


# Seconds to connect to the API server and to wait for one answer: an unreachable server fails a task in
# seconds instead of hanging it (a list is read in pages, so one answer never takes long).
REQUEST_TIMEOUT = (10, 120)

# How long one watch lasts before the server ends it and the watcher watches again (seconds).
WATCH_SECONDS = 300


class K8sError(Exception):
    """An API or configuration error with a message that says what to do."""

    def __init__(self, message, status=None, body=None):
        super().__init__(message)
        self.status = status
        self.body = body


class KubeClient:
    """Minimal REST access: request() returns the decoded JSON body as a dict."""

    def __init__(self, api_client):
        self.api_client = api_client

    @classmethod
    def from_params(cls, params):
        if not HAS_KUBERNETES:
            raise K8sError('The Python "kubernetes" client is required on the host running this module '
                           '(pip install "%s"): %s' % (KUBERNETES_REQUIREMENT, KUBERNETES_IMPORT_ERROR))
        configuration = k8s_client.Configuration()
        host = params.get('host')
        api_key = params.get('api_key')
        if host and api_key:
            configuration.host = host
            configuration.api_key = {'authorization': 'Bearer ' + api_key}
            if params.get('ca_cert'):
                configuration.ssl_ca_cert = params['ca_cert']
        else:
            kubeconfig = kubeconfig_path(params)
            if not os.path.exists(kubeconfig):
                raise K8sError('No kubeconfig found at %s: set the kubeconfig option (or K8S_AUTH_KUBECONFIG), '
                               'or give host and api_key.' % kubeconfig)
            try:
                k8s_config.load_kube_config(config_file=kubeconfig, context=params.get('context'),
                                            client_configuration=configuration)
            except Exception as exc:  # the client raises several types here
                raise K8sError('Cannot load kubeconfig %s (context %s): %s'
                               % (kubeconfig, params.get('context') or 'current', exc))
            if host:
                configuration.host = host
            if api_key:
                configuration.api_key = {'authorization': 'Bearer ' + api_key}
        configuration.verify_ssl = params.get('validate_certs', True)
        return cls(k8s_client.ApiClient(configuration))

    def request(self, method, path, body=None, query=None, content_type=None):
        """Call the API; return the JSON body as a dict (None for an empty body).

        content_type: of a body given as a string (server-side apply: sent as it is), or of a dict or list sent as
        JSON (a JSON patch, a merge patch); default application/json.
        """
        try:
            data = self._call(method, path, body, list((query or {}).items()), content_type)
        except ApiException as exc:
            raise K8sError(_api_message(exc, method, path), status=getattr(exc, 'status', None),
                           body=getattr(exc, 'body', None))
        except Exception as exc:  # connection refused, TLS, DNS
            raise K8sError('Cannot reach the Kubernetes API at %s (%s %s): %s. Check the kubeconfig/host '
                           'and that the API server is running.' % (self.api_client.configuration.host, method, path, exc))
        return json_loads(data) if data else None

    def text(self, path):
        """GET a path that answers plain text (the API server's /metrics); raises K8sError."""
        try:
            return self._call('GET', path, None, [], accept='text/plain').decode('utf-8', 'replace')
        except ApiException as exc:
            raise K8sError(_api_message(exc, 'GET', path), status=getattr(exc, 'status', None))
        except Exception as exc:  # connection refused, TLS, DNS
            raise K8sError('Cannot reach the Kubernetes API at %s (GET %s): %s.'
                           % (self.api_client.configuration.host, path, exc))

    def _call(self, method, path, body, query, content_type=None, accept='application/json'):
        """Raw response bytes; raises ApiException on a non-2xx status."""
        headers = {'Accept': accept, 'Content-Type': content_type or 'application/json'}
        if hasattr(self.api_client, 'param_serialize'):
            # kubernetes >= 35 (new OpenAPI generator): serialize, then call.
            serialized = self.api_client.param_serialize(method, path, query_params=query, header_params=headers,
                                                         body=body, auth_settings=['BearerToken'])
            response = self.api_client.call_api(*serialized, _request_timeout=REQUEST_TIMEOUT)
            data = response.read()
            if not 200 <= response.status <= 299:
                raise ApiException(http_resp=response)
            return data
        response = self.api_client.call_api(path, method, query_params=query, body=body, header_params=headers,
                                            auth_settings=['BearerToken'], _preload_content=False,
                                            _return_http_data_only=True, _request_timeout=REQUEST_TIMEOUT)
        return response.data

    def get(self, path, missing_ok=False):
        try:
            return self.request('GET', path)
        except K8sError as exc:
            if missing_ok and exc.status == 404:
                return None
            raise

    def list_items(self, path, query=None, transform=None):
        """Every item of a list endpoint, following continue tokens (see list_pages)."""
        return list_pages(self, path, query, transform)

    def watch(self, path, resource_version, query=None, timeout_seconds=WATCH_SECONDS):
        """The events of one watch of a list endpoint from resource_version, until the server ends it.

        Yields the events as dicts ({'type': 'ADDED'|'MODIFIED'|'DELETED'|'BOOKMARK', 'object': {...}});
        bookmarks are asked for, so a quiet watch still moves its resourceVersion on. The server ends
        the watch after timeout_seconds; watch again from the last resourceVersion seen. Raises K8sError,
        with status 410 when resource_version is too old: list again (list_pages_with_version), then watch.
        """
        params = dict(query or {}, watch='true', allowWatchBookmarks='true', resourceVersion=resource_version,
                      timeoutSeconds=int(timeout_seconds))
        try:
            response = self._stream('GET', path, list(params.items()), (10, int(timeout_seconds) + 60))
        except ApiException as exc:
            raise K8sError(_api_message(exc, 'WATCH', path), status=getattr(exc, 'status', None),
                           body=getattr(exc, 'body', None))
        except Exception as exc:  # connection refused, TLS, DNS
            raise K8sError('Cannot reach the Kubernetes API at %s (WATCH %s): %s'
                           % (self.api_client.configuration.host, path, exc))
        try:
            pending = b''
            for chunk in response.stream(amt=None, decode_content=False):
                pending += chunk
                lines = pending.split(b'\n')
                pending = lines.pop()
                for line in lines:
                    if line.strip():
                        yield _watch_event(line, path)
            if pending.strip():
                yield _watch_event(pending, path)
        except K8sError:
            raise
        except Exception as exc:  # the connection broke during the watch
            raise K8sError('The watch of %s ended: %s' % (path, exc))
        finally:
            response.release_conn()

    def _stream(self, method, path, query, timeout):
        """The urllib3 response of a request, its body not read yet; raises ApiException on a non-2xx status."""
        headers = {'Accept': 'application/json'}
        if hasattr(self.api_client, 'param_serialize'):
            serialized = self.api_client.param_serialize(method, path, query_params=query, header_params=headers,
                                                         auth_settings=['BearerToken'])
            response = self.api_client.call_api(*serialized, _request_timeout=timeout)
            if not 200 <= response.status <= 299:
                response.read()
                raise ApiException(http_resp=response)
            return response.response
        return self.api_client.call_api(path, method, query_params=query, header_params=headers,
                                        auth_settings=['BearerToken'], _preload_content=False,
                                        _return_http_data_only=True, _request_timeout=timeout)


def _watch_event(line, path):
    """One line of a watch stream as an event dict; an ERROR event (a Status) becomes K8sError."""
    try:
        event = json_loads(line)
    except ValueError:
        raise K8sError('The watch of %s sent something that is not JSON: %r' % (path, line[:200]))
    if event.get('type') == 'ERROR':
        status = event.get('object') or {}
        raise K8sError('The watch of %s failed (HTTP %s): %s' % (path, status.get('code'), status.get('message')),
                       status=status.get('code'), body=status)
    return event


PAGE_SIZE = 500
# Requests one module sends at a time (each its own connection of the client's pool, which holds 10 or more).
WORKERS = 8


def parallel_map(fn, items, workers=WORKERS):
    """[fn(item) for item in items], up to workers calls at a time in threads (the API answers them in parallel).

    The results keep the order of items; the first exception raised by a call is raised here.
    """
    items = list(items)
    if len(items) <= 1 or workers <= 1:
        return [fn(item) for item in items]
    with ThreadPoolExecutor(min(workers, len(items))) as pool:
        return list(pool.map(fn, items))


def list_pages(client, path, query=None, transform=None):
    """Every item of a list endpoint, page by page, following continue tokens.

    The one paging loop of the collection: client is anything with
    request(method, path, body=None, query=None) (a KubeClient, a test fake);
    query adds parameters such as labelSelector or fieldSelector; transform,
    when given, is applied to each item as its page arrives (to keep less of it).
    """
    return list_pages_with_version(client, path, query, transform)[0]


def list_pages_with_version(client, path, query=None, transform=None):
    """(items, resourceVersion) of a list endpoint: list_pages plus the version to watch from."""
    items = []
    params = dict(query or {}, limit=PAGE_SIZE)
    while True:
        page = client.request('GET', path, query=dict(params)) or {}
        page_items = page.get('items') or []
        items.extend(page_items if transform is None else map(transform, page_items))
        meta = page.get('metadata') or {}
        token = meta.get('continue')
        if not token:
            return items, meta.get('resourceVersion')
        params['continue'] = token


# ---------------------------------------------------------------- kubeconfigs

def kubeconfig_path(params):
    """The kubeconfig to use: the kubeconfig option, else $KUBECONFIG (first file), else ~/.kube/config; ~ expanded."""
    path = params.get('kubeconfig') or os.environ.get('KUBECONFIG', '').split(os.pathsep)[0] or '~/.kube/config'
    return os.path.expanduser(path)


def load_kubeconfig_text(text):
    """Parse kubeconfig text (YAML or JSON) into a dict; {} when unreadable."""
    if not text:
        return {}
    try:
        data = yaml.safe_load(text) if HAS_YAML else json.loads(text)
    except Exception:  # any parse error means "no usable kubeconfig"
        return {}
    return data if isinstance(data, dict) else {}


def named_entry(entries, name, key):
    """entry[key] of the kubeconfig list entry called name (contexts, clusters, users), or None."""
    for entry in entries or []:
        if isinstance(entry, dict) and entry.get('name') == name and isinstance(entry.get(key), dict):
            return entry[key]
    return None


def read_ca_file(path):
    try:
        with open(path, 'rb') as handle:
            return base64.b64encode(handle.read()).decode('ascii')
    except (IOError, OSError) as exc:
        raise K8sError('Cannot read the CA certificate %s: %s' % (path, exc))


def read_kubeconfig(path, what='kubeconfig'):
    """The kubeconfig file at path as a dict ({} when it does not parse). Raises K8sError when it cannot be read."""
    try:
        with open(path, 'r') as handle:
            return load_kubeconfig_text(handle.read())
    except (IOError, OSError) as exc:
        raise K8sError('Cannot read the %s %s: %s' % (what, path, exc))


def kubeconfig_context(config, context_name=None):
    """(name, context entry) of a parsed kubeconfig: context_name's, else the current context's; entry None if missing."""
    name = context_name or config.get('current-context')
    return name, named_entry(config.get('contexts'), name, 'context')


def kubeconfig_namespace(path, context_name=None):
    """The namespace a kubeconfig's context names, or None (no namespace, no such context). Raises K8sError."""
    dummy, context = kubeconfig_context(read_kubeconfig(path), context_name)
    namespace = (context or {}).get('namespace')
    return namespace if isinstance(namespace, str) and namespace else None


def kubeconfig_cluster(path, context_name=None):
    """(server, ca_data, insecure) of a kubeconfig's context. Raises K8sError."""
    config = read_kubeconfig(path, 'admin kubeconfig')
    name, context = kubeconfig_context(config, context_name)
    if context is None:
        raise K8sError('The kubeconfig %s has no context %s' % (path, name))
    cluster = named_entry(config.get('clusters'), context.get('cluster'), 'cluster')
    if cluster is None or not cluster.get('server'):
        raise K8sError('The kubeconfig %s has no server for cluster %s' % (path, context.get('cluster')))
    ca_data = cluster.get('certificate-authority-data')
    if not ca_data and cluster.get('certificate-authority'):
        ca_path = os.path.join(os.path.dirname(os.path.abspath(path)), os.path.expanduser(cluster['certificate-authority']))
        ca_data = read_ca_file(ca_path)
    return cluster['server'], ca_data or None, bool(cluster.get('insecure-skip-tls-verify'))


def cluster_endpoint(params):
    """(server, ca_data, insecure) of the API server the auth options point to (for kubeconfigs written for others).

    An api_server option (the address the others reach the API server at) overrides the URL."""
    if params.get('host') and params.get('api_key'):
        ca_data = read_ca_file(params['ca_cert']) if params.get('ca_cert') else None
        return params.get('api_server') or params['host'], ca_data, not params.get('validate_certs', True)
    server, ca_data, insecure = kubeconfig_cluster(kubeconfig_path(params), params.get('context'))
    return params.get('api_server') or params.get('host') or server, ca_data, insecure


def api_identity(client):
    """Who the client is to a reachable API server: {'host', 'version', 'user', 'groups'}; K8sError otherwise.

    GET /version answers anyone, so a SelfSubjectReview (authentication.k8s.io/v1) proves the credentials too."""
    version = client.request('GET', '/version') or {}
    review = client.request('POST', '/apis/authentication.k8s.io/v1/selfsubjectreviews', body={
        'apiVersion': 'authentication.k8s.io/v1', 'kind': 'SelfSubjectReview'}) or {}
    user = (review.get('status') or {}).get('userInfo') or {}
    return {'host': client.api_client.configuration.host, 'version': version.get('gitVersion', ''),
            'user': user.get('username', ''), 'groups': list(user.get('groups') or [])}


def _api_message(exc, method, path):
    status = getattr(exc, 'status', None)
    message = getattr(exc, 'reason', '') or str(exc)
    body = getattr(exc, 'body', None)
    if body:
        try:
            message = json.loads(body).get('message') or message
        except (ValueError, AttributeError):
            pass
    hint = ''
    if status == 401:
        hint = ' The credentials were refused: the token may be expired or revoked.'
    elif status == 403:
        hint = ' The user lacks RBAC permission for this request.'
    elif status == 404 and 'resource.k8s.io' in path:
        hint = ' Is resource.k8s.io/v1 served (Kubernetes >= 1.34)?'
    return 'Kubernetes API %s %s failed (HTTP %s): %s.%s' % (method, path, status, message, hint)
