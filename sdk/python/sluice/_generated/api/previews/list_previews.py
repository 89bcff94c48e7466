from http import HTTPStatus
from typing import Any, cast
from urllib.parse import quote

import httpx

from ...client import AuthenticatedClient, Client
from ...types import Response, UNSET
from ... import errors

from ...models.error_body import ErrorBody
from ...models.list_previews_response import ListPreviewsResponse
from ...types import UNSET, Unset
from typing import cast



def _get_kwargs(
    workspace_id: str,
    *,
    owner_user_id: str | Unset = UNSET,

) -> dict[str, Any]:
    

    

    params: dict[str, Any] = {}

    params["ownerUserId"] = owner_user_id


    params = {k: v for k, v in params.items() if v is not UNSET and v is not None}


    _kwargs: dict[str, Any] = {
        "method": "get",
        "url": "/v1/workspaces/{workspace_id}/previews".format(workspace_id=quote(str(workspace_id), safe=""),),
        "params": params,
    }


    return _kwargs



def _parse_response(*, client: AuthenticatedClient | Client, response: httpx.Response) -> ErrorBody | ListPreviewsResponse | None:
    if response.status_code == 200:
        response_200 = ListPreviewsResponse.from_dict(response.json())



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

    if response.status_code == 422:
        response_422 = ErrorBody.from_dict(response.json())



        return response_422

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


def _build_response(*, client: AuthenticatedClient | Client, response: httpx.Response) -> Response[ErrorBody | ListPreviewsResponse]:
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
    owner_user_id: str | Unset = UNSET,

) -> Response[ErrorBody | ListPreviewsResponse]:
    """ The workspace's preview grants, newest first.

    Args:
        workspace_id (str):
        owner_user_id (str | Unset): The user the workspace belongs to.

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[ErrorBody | ListPreviewsResponse]
     """


    kwargs = _get_kwargs(
        workspace_id=workspace_id,
owner_user_id=owner_user_id,

    )

    response = client.get_httpx_client().request(
        **kwargs,
    )

    return _build_response(client=client, response=response)

def sync(
    workspace_id: str,
    *,
    client: AuthenticatedClient,
    owner_user_id: str | Unset = UNSET,

) -> ErrorBody | ListPreviewsResponse | None:
    """ The workspace's preview grants, newest first.

    Args:
        workspace_id (str):
        owner_user_id (str | Unset): The user the workspace belongs to.

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        ErrorBody | ListPreviewsResponse
     """


    return sync_detailed(
        workspace_id=workspace_id,
client=client,
owner_user_id=owner_user_id,

    ).parsed

async def asyncio_detailed(
    workspace_id: str,
    *,
    client: AuthenticatedClient,
    owner_user_id: str | Unset = UNSET,

) -> Response[ErrorBody | ListPreviewsResponse]:
    """ The workspace's preview grants, newest first.

    Args:
        workspace_id (str):
        owner_user_id (str | Unset): The user the workspace belongs to.

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[ErrorBody | ListPreviewsResponse]
     """


    kwargs = _get_kwargs(
        workspace_id=workspace_id,
owner_user_id=owner_user_id,

    )

    response = await client.get_async_httpx_client().request(
        **kwargs
    )

    return _build_response(client=client, response=response)

async def asyncio(
    workspace_id: str,
    *,
    client: AuthenticatedClient,
    owner_user_id: str | Unset = UNSET,

) -> ErrorBody | ListPreviewsResponse | None:
    """ The workspace's preview grants, newest first.

    Args:
        workspace_id (str):
        owner_user_id (str | Unset): The user the workspace belongs to.

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        ErrorBody | ListPreviewsResponse
     """


    return (await asyncio_detailed(
        workspace_id=workspace_id,
client=client,
owner_user_id=owner_user_id,

    )).parsed
