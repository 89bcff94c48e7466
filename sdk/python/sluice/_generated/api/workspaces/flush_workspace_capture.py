from http import HTTPStatus
from typing import Any, cast
from urllib.parse import quote

import httpx

from ...client import AuthenticatedClient, Client
from ...types import Response, UNSET
from ... import errors

from ...models.error_body import ErrorBody
from ...models.flush_workspace_capture_request import FlushWorkspaceCaptureRequest
from ...models.workspace_capture_status import WorkspaceCaptureStatus
from typing import cast



def _get_kwargs(
    workspace_id: str,
    *,
    body: FlushWorkspaceCaptureRequest,

) -> dict[str, Any]:
    headers: dict[str, Any] = {}


    

    

    _kwargs: dict[str, Any] = {
        "method": "post",
        "url": "/v1/workspaces/{workspace_id}/capture/flush".format(workspace_id=quote(str(workspace_id), safe=""),),
    }

    _kwargs["json"] = body.to_dict()

    headers["Content-Type"] = "application/json"

    _kwargs["headers"] = headers
    return _kwargs



def _parse_response(*, client: AuthenticatedClient | Client, response: httpx.Response) -> ErrorBody | WorkspaceCaptureStatus | None:
    if response.status_code == 200:
        response_200 = WorkspaceCaptureStatus.from_dict(response.json())



        return response_200

    if response.status_code == 400:
        response_400 = ErrorBody.from_dict(response.json())



        return response_400

    if response.status_code == 401:
        response_401 = ErrorBody.from_dict(response.json())



        return response_401

    if response.status_code == 404:
        response_404 = ErrorBody.from_dict(response.json())



        return response_404

    if response.status_code == 409:
        response_409 = ErrorBody.from_dict(response.json())



        return response_409

    if response.status_code == 413:
        response_413 = ErrorBody.from_dict(response.json())



        return response_413

    if response.status_code == 500:
        response_500 = ErrorBody.from_dict(response.json())



        return response_500

    if response.status_code == 503:
        response_503 = ErrorBody.from_dict(response.json())



        return response_503

    if client.raise_on_unexpected_status:
        raise errors.UnexpectedStatus(response.status_code, response.content)
    else:
        return None


def _build_response(*, client: AuthenticatedClient | Client, response: httpx.Response) -> Response[ErrorBody | WorkspaceCaptureStatus]:
    return Response(
        status_code=HTTPStatus(response.status_code),
        content=response.content,
        headers=response.headers,
        parsed=_parse_response(client=client, response=response),
    )


def sync_detailed(
    workspace_id: str,
    *,
    client: AuthenticatedClient,
    body: FlushWorkspaceCaptureRequest,

) -> Response[ErrorBody | WorkspaceCaptureStatus]:
    """ Flush the workspace's captures: `suspend` (a checkpoint, the default)
    or `final` (the executor is ending). Answers the daemon's status.

    Args:
        workspace_id (str):
        body (FlushWorkspaceCaptureRequest):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[ErrorBody | WorkspaceCaptureStatus]
     """


    kwargs = _get_kwargs(
        workspace_id=workspace_id,
body=body,

    )

    response = client.get_httpx_client().request(
        **kwargs,
    )

    return _build_response(client=client, response=response)

def sync(
    workspace_id: str,
    *,
    client: AuthenticatedClient,
    body: FlushWorkspaceCaptureRequest,

) -> ErrorBody | WorkspaceCaptureStatus | None:
    """ Flush the workspace's captures: `suspend` (a checkpoint, the default)
    or `final` (the executor is ending). Answers the daemon's status.

    Args:
        workspace_id (str):
        body (FlushWorkspaceCaptureRequest):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        ErrorBody | WorkspaceCaptureStatus
     """


    return sync_detailed(
        workspace_id=workspace_id,
client=client,
body=body,

    ).parsed

async def asyncio_detailed(
    workspace_id: str,
    *,
    client: AuthenticatedClient,
    body: FlushWorkspaceCaptureRequest,

) -> Response[ErrorBody | WorkspaceCaptureStatus]:
    """ Flush the workspace's captures: `suspend` (a checkpoint, the default)
    or `final` (the executor is ending). Answers the daemon's status.

    Args:
        workspace_id (str):
        body (FlushWorkspaceCaptureRequest):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[ErrorBody | WorkspaceCaptureStatus]
     """


    kwargs = _get_kwargs(
        workspace_id=workspace_id,
body=body,

    )

    response = await client.get_async_httpx_client().request(
        **kwargs
    )

    return _build_response(client=client, response=response)

async def asyncio(
    workspace_id: str,
    *,
    client: AuthenticatedClient,
    body: FlushWorkspaceCaptureRequest,

) -> ErrorBody | WorkspaceCaptureStatus | None:
    """ Flush the workspace's captures: `suspend` (a checkpoint, the default)
    or `final` (the executor is ending). Answers the daemon's status.

    Args:
        workspace_id (str):
        body (FlushWorkspaceCaptureRequest):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        ErrorBody | WorkspaceCaptureStatus
     """


    return (await asyncio_detailed(
        workspace_id=workspace_id,
client=client,
body=body,

    )).parsed
